//! Units as linkperf users write them.
//!
//! Rates are bits per second with SI prefixes (`k` = 1000): `10M`, `1.5G`.
//! Sizes are bytes with binary prefixes (`K` = 1024): `64K`, `4M`.
//! This is iperf3's convention, so numbers copied from iperf3 commands mean the
//! same thing here. Anything else is rejected with a message that says why.

use std::fmt;
use std::time::Duration;

/// A value that could not be parsed; `Display` is one line meant for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    pub input: String,
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not {}", self.input, self.expected)
    }
}

impl std::error::Error for UnitError {}

/// Splits `1.5G` into (1.5, Some('G')); rejects signs, exponents, NaN and junk.
fn split_number<'a>(input: &'a str, expected: &'static str) -> Result<(f64, &'a str), UnitError> {
    let err = || UnitError {
        input: input.to_string(),
        expected,
    };
    let s = input.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return Err(err());
    }
    let value: f64 = num.parse().map_err(|_| err())?;
    if !value.is_finite() {
        return Err(err());
    }
    Ok((value, suffix))
}

fn checked_u64(value: f64, input: &str, expected: &'static str) -> Result<u64, UnitError> {
    // 2^64 is not representable exactly; stay clearly below it.
    if !value.is_finite() || !(0.0..1.8e19).contains(&value) {
        return Err(UnitError {
            input: input.to_string(),
            expected,
        });
    }
    Ok(value.round() as u64)
}

const RATE: &str = "a rate (bits/s, e.g. 100M, 1.5G, 0 for unlimited)";
const SIZE: &str = "a size (bytes, e.g. 1470, 64K, 4M)";
const DURATION: &str = "a duration (e.g. 10, 10s, 250ms, 2m)";
const PERCENT: &str = "a percentage (e.g. 1%, 0.5%)";
const COUNT: &str = "a whole number";

/// Parses a rate in bits/s. Accepts an optional trailing `bit/s`, `bps` or `b`.
pub fn parse_rate(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input, RATE)?;
    let mut rest = suffix;
    for tail in ["bit/s", "bps", "b"] {
        if let Some(stripped) = rest.strip_suffix(tail) {
            rest = stripped;
            break;
        }
    }
    let factor = match rest {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        "t" | "T" => 1e12,
        _ => {
            return Err(UnitError {
                input: input.to_string(),
                expected: RATE,
            })
        }
    };
    checked_u64(value * factor, input, RATE)
}

/// Parses a size in bytes. Binary prefixes: `K` = 1024, `M` = 1024², `G` = 1024³.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input, SIZE)?;
    let rest = suffix
        .strip_suffix("iB")
        .or_else(|| suffix.strip_suffix('B'))
        .unwrap_or(suffix);
    let factor = match rest {
        "" => 1.0,
        "k" | "K" => 1024.0,
        "m" | "M" => 1024.0 * 1024.0,
        "g" | "G" => 1024.0 * 1024.0 * 1024.0,
        "t" | "T" => 1024.0f64.powi(4),
        _ => {
            return Err(UnitError {
                input: input.to_string(),
                expected: SIZE,
            })
        }
    };
    let bytes = value * factor;
    if bytes.fract() != 0.0 && factor == 1.0 {
        return Err(UnitError {
            input: input.to_string(),
            expected: SIZE,
        });
    }
    checked_u64(bytes, input, SIZE)
}

/// Parses a duration; a bare number is seconds.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let (value, suffix) = split_number(input, DURATION)?;
    let seconds = match suffix {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(UnitError {
                input: input.to_string(),
                expected: DURATION,
            })
        }
    };
    if !(0.0..1e9).contains(&seconds) {
        return Err(UnitError {
            input: input.to_string(),
            expected: DURATION,
        });
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses `1%` or `0.01` style probabilities into a fraction in [0, 1].
pub fn parse_percent(input: &str) -> Result<f64, UnitError> {
    let (value, suffix) = split_number(input, PERCENT)?;
    let fraction = match suffix {
        "%" => value / 100.0,
        "" => value / 100.0,
        _ => {
            return Err(UnitError {
                input: input.to_string(),
                expected: PERCENT,
            })
        }
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(UnitError {
            input: input.to_string(),
            expected: PERCENT,
        });
    }
    Ok(fraction)
}

/// Parses a plain non-negative integer.
pub fn parse_count(input: &str) -> Result<u64, UnitError> {
    input.trim().parse::<u64>().map_err(|_| UnitError {
        input: input.to_string(),
        expected: COUNT,
    })
}

/// Formats bits/s with an SI prefix chosen so the number reads at a glance.
pub fn format_rate(bits_per_second: f64) -> String {
    // An empty f64 sum is -0.0; never print a negative zero rate.
    let bits_per_second = if bits_per_second == 0.0 {
        0.0
    } else {
        bits_per_second
    };
    let (value, prefix) = scale(bits_per_second, 1000.0, &["", "k", "M", "G", "T"]);
    format!("{} {}bit/s", three_digits(value), prefix)
}

/// Formats a byte count with a binary prefix.
pub fn format_bytes(bytes: f64) -> String {
    let (value, prefix) = scale(bytes, 1024.0, &["", "Ki", "Mi", "Gi", "Ti"]);
    if prefix.is_empty() {
        format!("{} B", bytes.round() as u64)
    } else {
        format!("{} {}B", three_digits(value), prefix)
    }
}

fn scale(mut value: f64, step: f64, prefixes: &[&'static str]) -> (f64, &'static str) {
    let mut i = 0;
    // 999.97 rounds to 1000: show it as 1.00 of the next prefix.
    while value.abs() >= step * 0.9995 && i + 1 < prefixes.len() {
        value /= step;
        i += 1;
    }
    (value, prefixes[i])
}

/// Three significant digits: 9.41, 94.1, 941.
fn three_digits(value: f64) -> String {
    // Round first so 99.97 prints as "100", not "100.0".
    let a = (value.abs() * 100.0).round() / 100.0;
    let a = if a >= 10.0 {
        (value.abs() * 10.0).round() / 10.0
    } else {
        a
    };
    if a >= 100.0 {
        format!("{value:.0}")
    } else if a >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_use_si_prefixes() {
        assert_eq!(parse_rate("10M").unwrap(), 10_000_000);
        assert_eq!(parse_rate("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("950M").unwrap(), 950_000_000);
        assert_eq!(parse_rate("64k").unwrap(), 64_000);
        assert_eq!(parse_rate("0").unwrap(), 0);
        assert_eq!(parse_rate("100Mbit/s").unwrap(), 100_000_000);
    }

    #[test]
    fn sizes_use_binary_prefixes() {
        assert_eq!(parse_size("64K").unwrap(), 65_536);
        assert_eq!(parse_size("1470").unwrap(), 1470);
        assert_eq!(parse_size("4M").unwrap(), 4 * 1024 * 1024);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("200KB").unwrap(), 204_800);
    }

    #[test]
    fn junk_is_rejected_with_a_reason() {
        for bad in [
            "10X", "-5", "1e999", "", "abc", "1..2", ".", "1e3", "NaN", "inf",
        ] {
            let e = parse_rate(bad).unwrap_err();
            assert!(e.to_string().contains("is not a rate"), "{bad}: {e}");
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("1.5").is_err());
        assert!(parse_rate("99999999999999999999999T").is_err());
    }

    #[test]
    fn durations_and_percentages() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            parse_duration("8.8ms").unwrap(),
            Duration::from_micros(8800)
        );
        assert!(parse_duration("5 parsecs").is_err());
        assert!((parse_percent("1%").unwrap() - 0.01).abs() < 1e-12);
        assert!(parse_percent("150%").is_err());
    }

    #[test]
    fn formatting_reads_at_a_glance() {
        assert_eq!(format_rate(941_000_000.0), "941 Mbit/s");
        assert_eq!(format_rate(9_410_000_000.0), "9.41 Gbit/s");
        assert_eq!(format_rate(512.0), "512 bit/s");
        assert_eq!(format_bytes(1_048_576.0), "1.00 MiB");
        assert_eq!(format_bytes(100.0), "100 B");
    }
}
