//! Units as linkperf users write them; README.md's "Units" table is the
//! reference (a test checks every spelling in it against these parsers).
//!
//! Rates are bits/s with decimal prefixes (`k` = 1000): `100M`, `100Mbit`,
//! `100Mbps`, `100mbit/s`, `1.5G`. Prefixes take any case, as in iperf3: no one
//! tests at millibits, so `m` is mega. A capital `B` (`MB/s`, `MBps`) means
//! bytes per second and is refused with the bits/s figure to write instead.
//! Sizes are bytes with binary prefixes (`K` = 1024) in any case, and `K`,
//! `KB`, `kb` and `KiB` are all 1024 bytes, as iperf3 reads them. Anything
//! else is refused with one line that says what is accepted.

use std::fmt;
use std::time::Duration;

/// A value that could not be parsed; `Display` is one line meant for people:
/// what is wrong, a hint when the mistake is recognised, what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    pub input: String,
    /// What the value should have been, e.g. "a rate".
    pub expected: &'static str,
    /// The grammar, with examples.
    pub accepted: &'static str,
    /// A recognised mistake and its fix, e.g. bytes per second for a rate.
    pub hint: Option<String>,
}

impl UnitError {
    fn new(input: &str, (expected, accepted): Kind) -> UnitError {
        UnitError {
            input: input.to_string(),
            expected,
            accepted,
            hint: None,
        }
    }

    fn hint(mut self, hint: String) -> UnitError {
        self.hint = Some(hint);
        self
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not {}", self.input, self.expected)?;
        if let Some(h) = &self.hint {
            write!(f, ": {h}")?;
        }
        write!(f, "; accepted: {}", self.accepted)
    }
}

impl std::error::Error for UnitError {}

/// What a value should be and the grammar that says how to write it.
type Kind = (&'static str, &'static str);

const RATE: Kind = (
    "a rate",
    "bits/s as a number, an optional k, M, G or T (x1000, any case) and an optional \
     b, bit, bps or bit/s, e.g. 100M, 100Mbit/s, 1.5G, 0 for unlimited",
);
const SIZE: Kind = (
    "a size",
    "bytes as a number, an optional K, M, G or T (x1024, any case; K = KB = KiB) and an \
     optional B, e.g. 1470, 64K, 64KiB, 4M",
);
const DURATION: Kind = (
    "a duration",
    "seconds, or a number with ns, us, ms, s, m or min, or h, e.g. 10, 250ms, 2m",
);
const PERCENT: Kind = ("a percentage", "0 to 100, with or without %, e.g. 1%, 0.5");
const COUNT: Kind = ("a whole number", "digits only, e.g. 1000");

/// Splits `1.5 G` into (1.5, "G"); rejects signs, exponents, NaN and junk.
fn split_number(input: &str, kind: Kind) -> Result<(f64, &str), UnitError> {
    let err = || UnitError::new(input, kind);
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
    // "100 Mbit/s", as linkperf prints rates, reads back.
    Ok((value, suffix.trim_start()))
}

fn checked_u64(value: f64, input: &str, kind: Kind) -> Result<u64, UnitError> {
    // 2^64 is not representable exactly; stay clearly below it.
    if !value.is_finite() || !(0.0..1.8e19).contains(&value) {
        return Err(UnitError::new(input, kind));
    }
    Ok(value.round() as u64)
}

/// Splits a leading k/m/g/t (any case) off `suffix`: (power, prefix, rest).
fn prefix(suffix: &str) -> (i32, &str, &str) {
    let power = match suffix.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        _ => 0,
    };
    if power == 0 {
        (0, "", suffix)
    } else {
        (power, &suffix[..1], &suffix[1..])
    }
}

/// `12.0` as "12", `1.5` as "1.5": for the numbers a hint proposes.
fn plain(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses a rate in bits/s; see the module comment for the grammar.
pub fn parse_rate(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input, RATE)?;
    let (power, pre, unit) = prefix(suffix);
    let lower = unit.to_ascii_lowercase();
    let bits = matches!(
        lower.as_str(),
        "" | "b" | "bit" | "bits" | "bps" | "b/s" | "bit/s" | "bits/s"
    );
    // `MB/s`, `MBps`, `MB`, `Mbyte/s`: bytes, unless spelt `MBit`.
    let bytes = (unit.starts_with('B') && !lower.starts_with("bit")) || lower.starts_with("byte");
    if bytes {
        let upper = pre.to_ascii_uppercase();
        return Err(UnitError::new(input, RATE).hint(format!(
            "{upper}{unit} is bytes per second and rates are bits/s: write {}{upper} ({} {upper}bit/s)",
            plain(value * 8.0),
            plain(value * 8.0)
        )));
    }
    if power > 0 && lower.starts_with('i') {
        return Err(UnitError::new(input, RATE).hint(format!(
            "rates take decimal prefixes (1{} = 1000^{power} bit/s), not binary ones",
            pre.to_ascii_uppercase()
        )));
    }
    if !bits {
        return Err(UnitError::new(input, RATE));
    }
    checked_u64(value * 1000f64.powi(power), input, RATE)
}

/// Parses a size in bytes; see the module comment for the grammar.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input, SIZE)?;
    let (power, pre, unit) = prefix(suffix);
    let lower = unit.to_ascii_lowercase();
    let unit_ok = if power > 0 {
        // iperf3 reads only the prefix letter: 64K, 64KB, 64kb, 64KiB alike.
        matches!(lower.as_str(), "" | "b" | "ib" | "i" | "byte" | "bytes")
    } else {
        matches!(lower.as_str(), "" | "b" | "byte" | "bytes")
    };
    if !unit_ok && lower.starts_with("bit") {
        let upper = pre.to_ascii_uppercase();
        return Err(UnitError::new(input, SIZE).hint(format!(
            "sizes are bytes, not bits: write {}{upper}",
            plain(value / 8.0)
        )));
    }
    if !unit_ok {
        return Err(UnitError::new(input, SIZE));
    }
    let bytes = value * 1024f64.powi(power);
    if bytes.fract() != 0.0 && power == 0 {
        return Err(UnitError::new(input, SIZE).hint("bytes are whole".into()));
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
        _ => return Err(UnitError::new(input, DURATION)),
    };
    if !(0.0..1e9).contains(&seconds) {
        return Err(UnitError::new(input, DURATION));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a duration where a bare number counts in `bare` (iperf3 takes some
/// options in milliseconds or microseconds): `3000` with `bare` 1 ms is 3 s;
/// a number with a unit (`500ms`, `250us`) reads as [`parse_duration`] does.
pub fn parse_duration_bare_in(input: &str, bare: Duration) -> Result<Duration, UnitError> {
    let (value, suffix) = split_number(input, DURATION)?;
    if !suffix.is_empty() {
        return parse_duration(input);
    }
    Duration::try_from_secs_f64(value * bare.as_secs_f64())
        .map_err(|_| UnitError::new(input, DURATION))
}

/// Parses a percentage, `1%` or `1` (a bare number is percent too), into a
/// fraction in [0, 1].
pub fn parse_percent(input: &str) -> Result<f64, UnitError> {
    let (value, suffix) = split_number(input, PERCENT)?;
    let fraction = match suffix {
        "%" => value / 100.0,
        "" => value / 100.0,
        _ => return Err(UnitError::new(input, PERCENT)),
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(UnitError::new(input, PERCENT));
    }
    Ok(fraction)
}

/// Parses a plain non-negative integer.
pub fn parse_count(input: &str) -> Result<u64, UnitError> {
    input
        .trim()
        .parse::<u64>()
        .map_err(|_| UnitError::new(input, COUNT))
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

/// The unit of rates and transferred bytes in human output, as iperf3's
/// `-f` letter gives it: lower case is bits/s with decimal prefixes, upper
/// case bytes/s with binary ones, `a`/`A` the prefix that reads best.
/// JSON is never affected: it always carries raw numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportUnit {
    /// Bits/s with the prefix that reads best (linkperf's default).
    #[default]
    AdaptiveBits,
    /// Bytes/s with the binary prefix that reads best.
    AdaptiveBytes,
    /// Bits/s in 1000^n: 1 k, 2 M, 3 G, 4 T.
    Bits(u8),
    /// Bytes/s in 1024^n: 1 KiB, 2 MiB, 3 GiB, 4 TiB.
    Bytes(u8),
}

/// The letters `-f` accepts, for its error line and help.
pub const REPORT_UNITS: &str =
    "k m g t (kbit/s .. Tbit/s), K M G T (KiB/s .. TiB/s), a (adaptive bits, the default), A (adaptive bytes)";

const BIT_RATES: [&str; 5] = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
const BYTE_RATES: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
const BYTE_SIZES: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

impl ReportUnit {
    /// Reads iperf3's `-f` letter; Err is one line naming the accepted letters.
    pub fn parse(input: &str) -> Result<ReportUnit, String> {
        let power = |c: char| match c.to_ascii_lowercase() {
            'k' => Some(1),
            'm' => Some(2),
            'g' => Some(3),
            't' => Some(4),
            _ => None,
        };
        let mut chars = input.chars();
        let unit = match (chars.next(), chars.next()) {
            (Some('a'), None) => Some(ReportUnit::AdaptiveBits),
            (Some('A'), None) => Some(ReportUnit::AdaptiveBytes),
            (Some(c), None) if c.is_ascii_lowercase() => power(c).map(ReportUnit::Bits),
            (Some(c), None) => power(c).map(ReportUnit::Bytes),
            _ => None,
        };
        unit.ok_or_else(|| format!("'{input}' is not a report unit; accepted: {REPORT_UNITS}"))
    }

    /// `bits_per_second` in this unit, e.g. "94100 kbit/s" or "11.2 MiB/s".
    pub fn rate(self, bits_per_second: f64) -> String {
        let bits_per_second = if bits_per_second == 0.0 {
            0.0
        } else {
            bits_per_second
        };
        match self {
            ReportUnit::AdaptiveBits => format_rate(bits_per_second),
            ReportUnit::AdaptiveBytes => {
                let (value, i) = scale_index(bits_per_second / 8.0, 1024.0);
                format!("{} {}", three_digits(value), BYTE_RATES[i])
            }
            ReportUnit::Bits(p) => fixed(bits_per_second, 1000.0, p, &BIT_RATES),
            ReportUnit::Bytes(p) => fixed(bits_per_second / 8.0, 1024.0, p, &BYTE_RATES),
        }
    }

    /// A transferred byte count: adaptive for `a`/`A`, otherwise in the
    /// binary prefix of the unit's letter (`-f m` and `-f M`: MiB).
    pub fn bytes(self, bytes: f64) -> String {
        match self {
            ReportUnit::AdaptiveBits | ReportUnit::AdaptiveBytes => format_bytes(bytes),
            ReportUnit::Bits(p) | ReportUnit::Bytes(p) => fixed(bytes, 1024.0, p, &BYTE_SIZES),
        }
    }
}

/// `value` in step^power, three significant digits at most after the point.
fn fixed(value: f64, step: f64, power: u8, labels: &[&str; 5]) -> String {
    let power = usize::from(power).min(labels.len() - 1);
    let scaled = value / step.powi(power as i32);
    format!("{} {}", three_digits(scaled), labels[power])
}

fn scale_index(mut value: f64, step: f64) -> (f64, usize) {
    let mut i = 0;
    while value.abs() >= step * 0.9995 && i + 1 < 5 {
        value /= step;
        i += 1;
    }
    (value, i)
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
    fn a_bare_duration_counts_in_the_unit_given() {
        let ms = Duration::from_millis(1);
        assert_eq!(
            parse_duration_bare_in("3000", ms),
            Ok(Duration::from_secs(3))
        );
        assert_eq!(
            parse_duration_bare_in("2.5", ms),
            Ok(Duration::from_micros(2500))
        );
        assert_eq!(
            parse_duration_bare_in("500ms", ms),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(parse_duration_bare_in("3s", ms), Ok(Duration::from_secs(3)));
        assert!(parse_duration_bare_in("fast", ms).is_err());
        assert!(parse_duration_bare_in("-5", ms).is_err());
    }

    #[test]
    fn rates_use_decimal_prefixes_in_any_case() {
        for (text, want) in [
            ("10M", 10_000_000),
            ("1.5G", 1_500_000_000),
            ("1.5g", 1_500_000_000),
            ("950M", 950_000_000),
            ("64k", 64_000),
            ("64K", 64_000),
            ("0", 0),
            ("100Mbit/s", 100_000_000),
            ("100mbit", 100_000_000),
            ("100mbit/s", 100_000_000),
            ("100Mbps", 100_000_000),
            ("100MBit/s", 100_000_000),
            ("100Mb/s", 100_000_000),
            ("100 Mbit/s", 100_000_000),
            ("2T", 2_000_000_000_000),
            ("512bps", 512),
        ] {
            assert_eq!(parse_rate(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bytes_per_second_are_refused_with_the_bits_to_write() {
        for (text, fix) in [
            ("100MB/s", "write 800M (800 Mbit/s)"),
            ("100MBps", "write 800M"),
            ("100MB", "write 800M"),
            ("1.5GB/s", "write 12G"),
            ("100mbyte/s", "write 800M"),
            ("10B/s", "write 80 (80 bit/s)"),
        ] {
            let e = parse_rate(text).unwrap_err().to_string();
            assert!(e.contains("bytes per second") && e.contains(fix), "{e}");
            assert!(e.contains("; accepted: bits/s"), "{e}");
        }
        let e = parse_rate("100Mibit/s").unwrap_err().to_string();
        assert!(e.contains("decimal prefixes"), "{e}");
    }

    #[test]
    fn sizes_use_binary_prefixes_in_any_case() {
        for (text, want) in [
            ("64K", 65_536),
            ("64k", 65_536),
            ("64KB", 65_536),
            ("64kB", 65_536),
            ("64kb", 65_536),
            ("64KiB", 65_536),
            ("64kib", 65_536),
            ("64 KiB", 65_536),
            ("1470", 1470),
            ("1470B", 1470),
            ("4M", 4 * 1024 * 1024),
            ("4MiB", 4 * 1024 * 1024),
            ("1.5K", 1536),
            ("200KB", 204_800),
            ("1G", 1 << 30),
        ] {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        let e = parse_size("64Kbit").unwrap_err().to_string();
        assert!(e.contains("not bits: write 8K"), "{e}");
        let e = parse_size("1.5").unwrap_err().to_string();
        assert!(
            e.contains("whole") && e.contains("; accepted: bytes"),
            "{e}"
        );
    }

    #[test]
    fn junk_is_rejected_with_what_is_accepted() {
        for bad in [
            "10X", "-5", "1e999", "", "abc", "1..2", ".", "1e3", "NaN", "inf", "10M/s", "5 M x",
        ] {
            let e = parse_rate(bad).unwrap_err().to_string();
            assert!(e.contains("is not a rate; accepted: bits/s"), "{bad}: {e}");
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains("is not a size"), "{bad}: {e}");
            assert!(e.contains("accepted: bytes"), "{bad}: {e}");
        }
        assert!(parse_rate("99999999999999999999999T").is_err());
        let e = parse_duration("5 parsecs").unwrap_err().to_string();
        assert!(e.contains("accepted: seconds"), "{e}");
        let e = parse_count("1k").unwrap_err().to_string();
        assert!(e.contains("accepted: digits"), "{e}");
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
    fn report_units_are_iperf3s_letters() {
        assert_eq!(ReportUnit::parse("k"), Ok(ReportUnit::Bits(1)));
        assert_eq!(ReportUnit::parse("G"), Ok(ReportUnit::Bytes(3)));
        assert_eq!(ReportUnit::parse("a"), Ok(ReportUnit::AdaptiveBits));
        assert_eq!(ReportUnit::parse("A"), Ok(ReportUnit::AdaptiveBytes));
        for bad in ["x", "kb", "", "Mbit"] {
            let e = ReportUnit::parse(bad).unwrap_err();
            assert!(e.contains("accepted: k m g t"), "{bad}: {e}");
        }
        // 8 Mbit/s is 8000 kbit/s, 1 MB/s = 0.954 MiB/s, 976.6 KiB/s.
        assert_eq!(ReportUnit::Bits(1).rate(8e6), "8000 kbit/s");
        assert_eq!(ReportUnit::Bits(3).rate(8e6), "0.01 Gbit/s");
        assert_eq!(ReportUnit::Bytes(2).rate(8e6), "0.95 MiB/s");
        assert_eq!(ReportUnit::Bytes(1).rate(8e6), "977 KiB/s");
        assert_eq!(ReportUnit::AdaptiveBytes.rate(8e6), "977 KiB/s");
        assert_eq!(ReportUnit::AdaptiveBits.rate(8e6), "8.00 Mbit/s");
        assert_eq!(ReportUnit::Bits(1).bytes(327_680.0), "320 KiB");
        assert_eq!(ReportUnit::Bytes(2).bytes(3_145_728.0), "3.00 MiB");
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
