//! Distributions of inter-departure times, sizes and ON/OFF periods: how
//! they are written (`exp:1ms`, `normal:1000:200`), checked, drawn and
//! described. Values are seconds for times and bytes for sizes.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// What a distribution's values measure, which decides how they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Seconds; written as durations (`1ms`, `250us`, `2` = 2 s).
    Time,
    /// Bytes; written as sizes (`1200`, `1K`).
    Size,
}

/// The longest gap between two messages a schedule keeps (a day, longer
/// than any test): a longer or broken draw would make a due time no timer
/// can hold.
pub const MAX_GAP_S: f64 = 86_400.0;

/// A distribution, by its parameters in base units (seconds or bytes).
/// Pareto, Weibull and gamma are given by their shape and their mean, so
/// every model has a known mean rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "dist")]
pub enum Dist {
    Const {
        value: f64,
    },
    Uniform {
        low: f64,
        high: f64,
    },
    /// Exponential: Poisson arrivals when used for inter-departure times.
    Exp {
        mean: f64,
    },
    /// Normal; a draw at or below zero is drawn again (a truncated normal).
    Normal {
        mean: f64,
        sd: f64,
    },
    /// Lognormal with this mean and standard deviation of the values themselves.
    Lognormal {
        mean: f64,
        sd: f64,
    },
    /// Pareto (type I) with this shape (> 1) and mean: scale = mean (shape - 1) / shape.
    Pareto {
        shape: f64,
        mean: f64,
    },
    Weibull {
        shape: f64,
        mean: f64,
    },
    Gamma {
        shape: f64,
        mean: f64,
    },
}

/// Names accepted in the text form, for error messages and `traffic list`.
pub const NAMES: &str = "const:V, uniform:LOW:HIGH, exp:MEAN, normal:MEAN:SD, lognormal:MEAN:SD, \
     pareto:SHAPE:MEAN, weibull:SHAPE:MEAN, gamma:SHAPE:MEAN";

fn value(q: Quantity, text: &str) -> Result<f64, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("'{text}' is negative; values must be positive"));
    }
    match q {
        Quantity::Time => linkperf_units::parse_duration(text)
            .map(|d| d.as_secs_f64())
            .map_err(|e| e.to_string()),
        Quantity::Size => linkperf_units::parse_size(text)
            .map(|b| b as f64)
            .map_err(|e| e.to_string()),
    }
}

fn shape(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| format!("shape '{text}' must be a positive number, e.g. 1.5"))
}

impl Dist {
    /// Parses `NAME:ARG[:ARG]`; the message says what is wrong and what is accepted.
    pub fn parse(text: &str, q: Quantity) -> Result<Dist, String> {
        let mut parts = text.trim().split(':');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let args: Vec<&str> = parts.collect();
        let want = |n: usize, form: &str| -> Result<(), String> {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "'{text}': {name} takes {n} value(s), written {form}"
                ))
            }
        };
        let v = |i: usize| value(q, args[i]).map_err(|e| format!("'{text}': {e}"));
        let d = match name.as_str() {
            "const" | "constant" => {
                want(1, "const:V")?;
                Dist::Const { value: v(0)? }
            }
            "uniform" => {
                want(2, "uniform:LOW:HIGH")?;
                Dist::Uniform {
                    low: v(0)?,
                    high: v(1)?,
                }
            }
            "exp" | "exponential" | "poisson" => {
                want(1, "exp:MEAN")?;
                Dist::Exp { mean: v(0)? }
            }
            "normal" => {
                want(2, "normal:MEAN:SD")?;
                Dist::Normal {
                    mean: v(0)?,
                    sd: v(1)?,
                }
            }
            "lognormal" => {
                want(2, "lognormal:MEAN:SD")?;
                Dist::Lognormal {
                    mean: v(0)?,
                    sd: v(1)?,
                }
            }
            "pareto" | "weibull" | "gamma" => {
                want(2, &format!("{name}:SHAPE:MEAN"))?;
                let (shape, mean) = (shape(args[0]).map_err(|e| format!("'{text}': {e}"))?, v(1)?);
                match name.as_str() {
                    "pareto" => Dist::Pareto { shape, mean },
                    "weibull" => Dist::Weibull { shape, mean },
                    _ => Dist::Gamma { shape, mean },
                }
            }
            other => {
                return Err(format!(
                    "unknown distribution '{other}' in '{text}'; accepted: {NAMES}"
                ))
            }
        };
        d.check().map_err(|e| format!("'{text}': {e}"))?;
        Ok(d)
    }

    /// What makes a distribution unusable: a mean at or below zero, an
    /// empty range, a Pareto shape without a finite mean.
    pub fn check(&self) -> Result<(), String> {
        let positive = |what: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!("the {what} must be positive, got {x}"))
            }
        };
        match *self {
            Dist::Const { value } => positive("value", value),
            Dist::Uniform { low, high } => {
                if low.is_finite() && high.is_finite() && low >= 0.0 && high > low {
                    Ok(())
                } else {
                    Err(format!(
                        "uniform needs 0 <= LOW < HIGH, got {low} and {high}"
                    ))
                }
            }
            Dist::Exp { mean } => positive("mean", mean),
            Dist::Normal { mean, sd } | Dist::Lognormal { mean, sd } => {
                positive("mean", mean)?;
                positive("standard deviation", sd)
            }
            Dist::Pareto { shape, mean } => {
                if shape <= 1.0 {
                    return Err(format!(
                        "a Pareto shape of {shape} has no finite mean; use a shape above 1 (e.g. 1.5)"
                    ));
                }
                positive("mean", mean)
            }
            Dist::Weibull { shape, mean } | Dist::Gamma { shape, mean } => {
                positive("shape", shape)?;
                positive("mean", mean)
            }
        }
    }

    /// The mean of the values drawn (for the truncated normal, of the
    /// untruncated one: the two differ by less than 1e-6 when mean > 5 sd).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const { value } => value,
            Dist::Uniform { low, high } => (low + high) / 2.0,
            Dist::Exp { mean }
            | Dist::Normal { mean, .. }
            | Dist::Lognormal { mean, .. }
            | Dist::Pareto { mean, .. }
            | Dist::Weibull { mean, .. }
            | Dist::Gamma { mean, .. } => mean,
        }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match *self {
            Dist::Const { value } => value,
            Dist::Uniform { low, high } => low + (high - low) * rng.open01(),
            Dist::Exp { mean } => -mean * rng.open01().ln(),
            Dist::Normal { mean, sd } => loop {
                let x = mean + sd * rng.normal();
                if x > 0.0 {
                    return x;
                }
            },
            Dist::Lognormal { mean, sd } => {
                let (mu, sigma) = lognormal_params(mean, sd);
                (mu + sigma * rng.normal()).exp()
            }
            Dist::Pareto { shape, mean } => {
                let scale = mean * (shape - 1.0) / shape;
                scale / rng.open01().powf(1.0 / shape)
            }
            Dist::Weibull { shape, mean } => {
                let scale = mean / gamma_fn(1.0 + 1.0 / shape);
                scale * (-rng.open01().ln()).powf(1.0 / shape)
            }
            Dist::Gamma { shape, mean } => mean / shape * standard_gamma(shape, rng),
        }
    }

    /// The text form, values in base units written with `q`'s unit.
    pub fn text(&self, q: Quantity) -> String {
        let v = |x: f64| match q {
            Quantity::Time => format_seconds(x),
            Quantity::Size => format!("{}", (x * 1000.0).round() / 1000.0),
        };
        match *self {
            Dist::Const { value } => format!("const:{}", v(value)),
            Dist::Uniform { low, high } => format!("uniform:{}:{}", v(low), v(high)),
            Dist::Exp { mean } => format!("exp:{}", v(mean)),
            Dist::Normal { mean, sd } => format!("normal:{}:{}", v(mean), v(sd)),
            Dist::Lognormal { mean, sd } => format!("lognormal:{}:{}", v(mean), v(sd)),
            Dist::Pareto { shape, mean } => format!("pareto:{shape}:{}", v(mean)),
            Dist::Weibull { shape, mean } => format!("weibull:{shape}:{}", v(mean)),
            Dist::Gamma { shape, mean } => format!("gamma:{shape}:{}", v(mean)),
        }
    }
}

/// Seconds as the shortest exact duration text: 0.02 -> "20ms".
pub fn format_seconds(s: f64) -> String {
    let trim = |x: f64| {
        let t = format!("{:.6}", x);
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if s >= 1.0 || s == 0.0 {
        format!("{}s", trim(s))
    } else if s >= 1e-3 {
        format!("{}ms", trim(s * 1e3))
    } else {
        format!("{}us", trim(s * 1e6))
    }
}

/// mu and sigma of the underlying normal for a lognormal of this mean and sd.
pub fn lognormal_params(mean: f64, sd: f64) -> (f64, f64) {
    let sigma2 = (1.0 + (sd / mean).powi(2)).ln();
    (mean.ln() - sigma2 / 2.0, sigma2.sqrt())
}

/// Marsaglia and Tsang's method (2000) for a gamma deviate of scale 1; a
/// shape below 1 draws at shape + 1 and scales by u^(1/shape).
fn standard_gamma(shape: f64, rng: &mut Rng) -> f64 {
    if shape < 1.0 {
        return standard_gamma(shape + 1.0, rng) * rng.open01().powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.normal();
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = rng.open01();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// The gamma function (Lanczos approximation, g = 7, 9 terms; relative
/// error below 1e-13 for the arguments Weibull means need).
pub fn gamma_fn(x: f64) -> f64 {
    const G: [f64; 9] = [
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
        return std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma_fn(1.0 - x));
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[0]
        + G[1..]
            .iter()
            .enumerate()
            .map(|(i, g)| g / (x + i as f64 + 1.0))
            .sum::<f64>();
    (std::f64::consts::TAU).sqrt() * t.powf(x + 0.5) * (-t).exp() * sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_and_sd(d: &Dist, n: usize) -> (f64, f64) {
        let mut r = Rng::new(42);
        let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r)).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        (m, v.sqrt())
    }

    #[test]
    fn every_distribution_draws_its_mean() {
        // (distribution, its standard deviation from the textbook formulas)
        let cases = [
            (Dist::Const { value: 3.0 }, 0.0),
            (
                Dist::Uniform {
                    low: 1.0,
                    high: 3.0,
                },
                2.0 / 12f64.sqrt(),
            ),
            (Dist::Exp { mean: 2.0 }, 2.0),
            (
                Dist::Normal {
                    mean: 10.0,
                    sd: 1.0,
                },
                1.0,
            ),
            (Dist::Lognormal { mean: 5.0, sd: 2.0 }, 2.0),
            // Pareto shape 3, mean 1.5: scale 1, variance 3 / (4 * 1) = 0.75.
            (
                Dist::Pareto {
                    shape: 3.0,
                    mean: 1.5,
                },
                0.75f64.sqrt(),
            ),
            // Weibull shape 1 is the exponential.
            (
                Dist::Weibull {
                    shape: 1.0,
                    mean: 2.0,
                },
                2.0,
            ),
            // Gamma shape k, mean m: sd = m / sqrt(k).
            (
                Dist::Gamma {
                    shape: 4.0,
                    mean: 8.0,
                },
                4.0,
            ),
            (
                Dist::Gamma {
                    shape: 0.5,
                    mean: 1.0,
                },
                2f64.sqrt(),
            ),
        ];
        let n = 400_000;
        for (d, sd) in cases {
            let (m, s) = mean_and_sd(&d, n);
            // Five standard errors of the mean, plus rounding.
            let tol = 5.0 * sd / (n as f64).sqrt() + 1e-12;
            assert!(
                (m - d.mean()).abs() <= tol,
                "{d:?}: mean {m}, want {}",
                d.mean()
            );
            assert!(
                (s - sd).abs() <= 0.05 * sd + 1e-12,
                "{d:?}: sd {s}, want {sd}"
            );
        }
    }

    #[test]
    fn gamma_function_matches_factorials() {
        for (x, want) in [(1.0, 1.0), (5.0, 24.0), (0.5, std::f64::consts::PI.sqrt())] {
            assert!((gamma_fn(x) - want).abs() < 1e-10 * want, "{x}");
        }
    }

    #[test]
    fn text_round_trips_with_units() {
        let d = Dist::parse("exp:250us", Quantity::Time).unwrap();
        assert_eq!(d, Dist::Exp { mean: 250e-6 });
        assert_eq!(d.text(Quantity::Time), "exp:250us");
        let s = Dist::parse("normal:1K:200", Quantity::Size).unwrap();
        assert_eq!(
            s,
            Dist::Normal {
                mean: 1024.0,
                sd: 200.0
            }
        );
        assert_eq!(Dist::parse(&s.text(Quantity::Size), Quantity::Size), Ok(s));
    }

    #[test]
    fn bad_distributions_say_what_is_accepted() {
        let e = Dist::parse("zipf:2", Quantity::Size).unwrap_err();
        assert!(
            e.contains("unknown distribution 'zipf'") && e.contains("weibull"),
            "{e}"
        );
        let e = Dist::parse("exp:0", Quantity::Time).unwrap_err();
        assert!(e.contains("mean must be positive"), "{e}");
        let e = Dist::parse("pareto:1:10ms", Quantity::Time).unwrap_err();
        assert!(e.contains("no finite mean"), "{e}");
        let e = Dist::parse("exp:-1ms", Quantity::Time).unwrap_err();
        assert!(e.contains("negative"), "{e}");
        let e = Dist::parse("uniform:5", Quantity::Size).unwrap_err();
        assert!(e.contains("uniform:LOW:HIGH"), "{e}");
        assert!(Dist::parse("uniform:5:5", Quantity::Size).is_err());
    }

    /// erf (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7).
    fn erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let y = 1.0 - poly * (-x * x).exp();
        y.copysign(x)
    }

    fn phi(z: f64) -> f64 {
        0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2))
    }

    /// Regularised lower incomplete gamma P(k, x) by its power series.
    fn gamma_p(k: f64, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let (mut term, mut sum) = (1.0 / k, 1.0 / k);
        for n in 1..2000 {
            term *= x / (k + n as f64);
            sum += term;
            if term < sum * 1e-15 {
                break;
            }
        }
        (sum * (k * x.ln() - x - gamma_fn(k).ln()).exp()).min(1.0)
    }

    /// The textbook CDF of each distribution, written from its definition
    /// (not from the sampler's inverse transforms).
    fn cdf(d: &Dist, x: f64) -> f64 {
        match *d {
            Dist::Const { value } => f64::from(x >= value),
            Dist::Uniform { low, high } => ((x - low) / (high - low)).clamp(0.0, 1.0),
            Dist::Exp { mean } => 1.0 - (-x / mean).exp(),
            Dist::Normal { mean, sd } => {
                let below0 = phi(-mean / sd);
                ((phi((x - mean) / sd) - below0) / (1.0 - below0)).max(0.0)
            }
            Dist::Lognormal { mean, sd } => {
                let (mu, sigma) = lognormal_params(mean, sd);
                if x <= 0.0 {
                    0.0
                } else {
                    phi((x.ln() - mu) / sigma)
                }
            }
            Dist::Pareto { shape, mean } => {
                let xm = mean * (shape - 1.0) / shape;
                if x < xm {
                    0.0
                } else {
                    1.0 - (xm / x).powf(shape)
                }
            }
            Dist::Weibull { shape, mean } => {
                let scale = mean / gamma_fn(1.0 + 1.0 / shape);
                1.0 - (-(x.max(0.0) / scale).powf(shape)).exp()
            }
            Dist::Gamma { shape, mean } => gamma_p(shape, x / (mean / shape)),
        }
    }

    #[test]
    fn every_continuous_distribution_passes_kolmogorov_smirnov() {
        let n = 100_000;
        // D at p = 0.01 is 1.628 / sqrt(n) for large n.
        let critical = 1.628 / (n as f64).sqrt();
        for (i, d) in [
            Dist::Uniform {
                low: 100.0,
                high: 1500.0,
            },
            Dist::Exp { mean: 1e-4 },
            Dist::Normal { mean: 1.0, sd: 0.5 },
            Dist::Lognormal { mean: 5.0, sd: 2.0 },
            Dist::Pareto {
                shape: 1.5,
                mean: 3.0,
            },
            Dist::Weibull {
                shape: 0.7,
                mean: 2.0,
            },
            Dist::Gamma {
                shape: 4.0,
                mean: 8.0,
            },
            Dist::Gamma {
                shape: 0.5,
                mean: 1.0,
            },
        ]
        .iter()
        .enumerate()
        {
            let mut r = Rng::new(1000 + i as u64);
            let mut xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r)).collect();
            xs.sort_by(f64::total_cmp);
            let dmax = xs
                .iter()
                .enumerate()
                .map(|(j, &x)| {
                    let f = cdf(d, x);
                    (f - j as f64 / n as f64)
                        .abs()
                        .max(((j + 1) as f64 / n as f64 - f).abs())
                })
                .fold(0.0, f64::max);
            assert!(dmax < critical, "{d:?}: D = {dmax:.5} >= {critical:.5}");
        }
    }
}
