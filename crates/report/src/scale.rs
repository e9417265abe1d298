//! Scales (data value to pixel) and tick values people can read.

/// Linear or logarithmic mapping from a data domain to a pixel range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    log_base: Option<f64>,
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    /// A linear scale; an empty domain is widened so nothing divides by zero.
    pub fn linear(domain: (f64, f64), range: (f64, f64)) -> Scale {
        let (mut d0, mut d1) = domain;
        if d1 == d0 {
            d0 -= 0.5;
            d1 += 0.5;
        }
        Scale {
            log_base: None,
            d0,
            d1,
            r0: range.0,
            r1: range.1,
        }
    }

    /// A logarithmic scale; the domain must be positive (it is clamped to be).
    pub fn log(base: f64, domain: (f64, f64), range: (f64, f64)) -> Scale {
        let d0 = domain.0.max(f64::MIN_POSITIVE);
        let mut d1 = domain.1.max(d0);
        if d1 == d0 {
            d1 = d0 * base;
        }
        Scale {
            log_base: Some(base),
            d0,
            d1,
            r0: range.0,
            r1: range.1,
        }
    }

    /// Pixel position of `v`. Values outside the domain map outside the range;
    /// non-positive values on a log scale map to the low end.
    pub fn map(&self, v: f64) -> f64 {
        let t = match self.log_base {
            None => (v - self.d0) / (self.d1 - self.d0),
            Some(_) => {
                if v <= 0.0 {
                    return self.r0;
                }
                (v.ln() - self.d0.ln()) / (self.d1.ln() - self.d0.ln())
            }
        };
        self.r0 + t * (self.r1 - self.r0)
    }
}

/// Tick positions for a linear axis and the step between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// The domain rounded outwards to whole steps.
    pub lo: f64,
    pub hi: f64,
    pub step: f64,
    pub values: Vec<f64>,
}

/// The "nice" number (1, 2, 2.5 or 5 times a power of ten) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let f = raw / base;
    // Small tolerance so 0.2000000001 stays 0.2, not 0.25.
    let nice = if f <= 1.0 + 1e-9 {
        1.0
    } else if f <= 2.0 + 1e-9 {
        2.0
    } else if f <= 2.5 + 1e-9 {
        2.5
    } else if f <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nice * base
}

/// About `target` ticks covering [min, max], at multiples of a nice step.
pub fn linear_ticks(min: f64, max: f64, target: usize) -> Ticks {
    let (mut min, mut max) = if min <= max { (min, max) } else { (max, min) };
    if !min.is_finite() || !max.is_finite() {
        min = 0.0;
        max = 1.0;
    }
    if min == max {
        if min == 0.0 {
            max = 1.0;
        } else {
            let pad = min.abs() * 0.1;
            min -= pad;
            max += pad;
        }
    }
    let intervals = target.max(2) - 1;
    let mut step = nice_step((max - min) / intervals as f64);
    // The rounded-out domain can need one step more than asked: widen the
    // step until the ticks fit the target (plus one of slack).
    loop {
        // Tolerances so float noise (3.0000000001 steps) costs no extra tick.
        let lo = (min / step + 1e-9).floor() * step;
        let hi = (max / step - 1e-9).ceil() * step;
        let n = ((hi - lo) / step).round() as usize + 1;
        if n <= target.max(2) + 1 {
            let values = (0..n).map(|i| clean(lo + i as f64 * step, step)).collect();
            return Ticks {
                lo: clean(lo, step),
                hi: clean(hi, step),
                step,
                values,
            };
        }
        step = nice_step(step * 1.01);
    }
}

/// Removes float noise (0.30000000000000004) relative to the step.
fn clean(v: f64, step: f64) -> f64 {
    let q = step / 1000.0;
    let r = (v / q).round() * q;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Ticks for a log axis over [min, max]: powers of `base`, thinned to at most
/// `max_count`; with base 10 and at most two decades, 2 and 5 times the powers too.
pub fn log_ticks(min: f64, max: f64, base: f64, max_count: usize) -> Vec<f64> {
    if !(min > 0.0 && max >= min && base > 1.0) {
        return Vec::new();
    }
    let lo = (min.ln() / base.ln() - 1e-9).ceil() as i32;
    let hi = (max.ln() / base.ln() + 1e-9).floor() as i32;
    let mut powers: Vec<f64> = (lo..=hi).map(|e| base.powi(e)).collect();
    if base == 10.0 && powers.len() <= 3 {
        let mut more = Vec::new();
        let e0 = (min.log10()).floor() as i32;
        let e1 = (max.log10()).ceil() as i32;
        for e in e0..=e1 {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(e);
                if v >= min * (1.0 - 1e-9) && v <= max * (1.0 + 1e-9) {
                    more.push(v);
                }
            }
        }
        if more.len() <= max_count.max(1) {
            powers = more;
        }
    }
    let max_count = max_count.max(1);
    if powers.len() > max_count {
        let every = powers.len().div_ceil(max_count);
        powers = powers.into_iter().step_by(every).collect();
    }
    powers
}

/// Label for a tick value with as many decimals as the step needs, so every
/// label is the exact tick value: 2.5 stays "2.5", never "2" or "3".
pub fn tick_label(v: f64, step: f64) -> String {
    let decimals = if !step.is_finite() || step <= 0.0 {
        0
    } else {
        // 0.25 needs 2, 0.5 and 2.5 need 1, 0.2 needs 1, 250 needs none.
        let mut d = 0;
        let mut s = step;
        while d < 6 && (s - s.round()).abs() > 1e-6 * s.abs().max(1.0) {
            s *= 10.0;
            d += 1;
        }
        d
    };
    let s = format!("{:.*}", decimals, v);
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s[1..].to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.9), 1.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.021), 0.025);
        assert_eq!(nice_step(180.0), 200.0);
    }

    #[test]
    fn linear_ticks_cover_the_data_at_nice_values() {
        let t = linear_ticks(0.0, 947.0, 6);
        assert_eq!(t.step, 200.0);
        assert_eq!(t.values, vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        assert_eq!((t.lo, t.hi), (0.0, 1000.0));

        let t = linear_ticks(0.0, 1.0, 5);
        assert_eq!(t.values, vec![0.0, 0.25, 0.5, 0.75, 1.0]);

        let t = linear_ticks(0.1, 0.7, 6);
        assert!(t.values.contains(&0.6), "no float noise: {:?}", t.values);
        assert!(t.lo <= 0.1 && t.hi >= 0.7);

        let t = linear_ticks(-3.0, 7.0, 6);
        assert!(t.values.contains(&0.0));
        assert!(t.lo <= -3.0 && t.hi >= 7.0);
    }

    #[test]
    fn linear_ticks_never_exceed_target_by_more_than_one() {
        for &(a, b) in &[
            (0.0, 1.01),
            (0.0, 99.0),
            (3.0, 1234.5),
            (0.0, 6.1e9),
            (17.0, 17.0),
        ] {
            for target in 3..9 {
                let t = linear_ticks(a, b, target);
                assert!(
                    t.values.len() <= target + 1,
                    "{a}..{b} target {target}: {t:?}"
                );
                assert!(t.values.len() >= 2);
                assert!(t.lo <= a.min(b) && t.hi >= a.max(b));
            }
        }
    }

    #[test]
    fn degenerate_ranges_still_give_ticks() {
        let t = linear_ticks(0.0, 0.0, 5);
        assert_eq!(t.lo, 0.0);
        assert!(t.hi >= 1.0);
        let t = linear_ticks(50.0, 50.0, 5);
        assert!(t.lo < 50.0 && t.hi > 50.0);
        let t = linear_ticks(f64::NAN, 3.0, 5);
        assert!(t.values.len() >= 2);
    }

    #[test]
    fn log_ticks_are_powers_thinned_to_fit() {
        assert_eq!(
            log_ticks(4096.0, 65536.0, 2.0, 10),
            vec![4096.0, 8192.0, 16384.0, 32768.0, 65536.0]
        );
        let many = log_ticks(1.0, 1048576.0, 2.0, 8);
        assert!(many.len() <= 8, "{many:?}");
        assert_eq!(many[0], 1.0);
        assert_eq!(log_ticks(10.0, 100000.0, 10.0, 10).len(), 5);
        // A narrow decade range gets 2 and 5 too.
        assert_eq!(
            log_ticks(1.0, 100.0, 10.0, 10),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        assert!(log_ticks(0.0, 10.0, 10.0, 5).is_empty());
    }

    #[test]
    fn scales_map_ends_to_ends() {
        let s = Scale::linear((0.0, 100.0), (50.0, 550.0));
        assert_eq!(s.map(0.0), 50.0);
        assert_eq!(s.map(100.0), 550.0);
        assert_eq!(s.map(50.0), 300.0);
        // Inverted ranges (y axes) work the same way.
        let s = Scale::linear((0.0, 10.0), (400.0, 0.0));
        assert_eq!(s.map(10.0), 0.0);
        let l = Scale::log(2.0, (1024.0, 4096.0), (0.0, 200.0));
        assert!((l.map(2048.0) - 100.0).abs() < 1e-9);
        assert_eq!(l.map(-1.0), 0.0);
        let d = Scale::linear((5.0, 5.0), (0.0, 10.0));
        assert_eq!(d.map(5.0), 5.0);
    }

    #[test]
    fn tick_labels_use_the_steps_decimals() {
        assert_eq!(tick_label(200.0, 200.0), "200");
        assert_eq!(tick_label(0.25, 0.25), "0.25");
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(1.0, 0.5), "1.0");
        assert_eq!(tick_label(-0.0, 0.1), "0.0");
        assert_eq!(tick_label(2.5e9, 5e8), "2500000000");
        // Steps of 2.5 (and 25, 250) are exact, not rounded to a neighbour.
        assert_eq!(tick_label(2.5, 2.5), "2.5");
        assert_eq!(tick_label(7.5, 2.5), "7.5");
        assert_eq!(tick_label(5.0, 2.5), "5.0");
        assert_eq!(tick_label(75.0, 25.0), "75");
        assert_eq!(tick_label(12.5, 2.5), "12.5");
    }

    #[test]
    fn every_tick_label_reads_back_as_its_value() {
        for &(a, b) in &[
            (0.0, 11.0),
            (0.0, 8.3),
            (0.0, 0.9),
            (0.0, 37.0),
            (2.0, 13.0),
        ] {
            for target in 3..10 {
                let t = linear_ticks(a, b, target);
                for v in &t.values {
                    let label = tick_label(*v, t.step);
                    let back: f64 = label.parse().unwrap();
                    assert!(
                        (back - v).abs() < 1e-9,
                        "{a}..{b}/{target}: {v} shown as {label}"
                    );
                }
            }
        }
    }
}
