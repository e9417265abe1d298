//! Numbers as the report prints them: rates with SI prefixes (k = 1000),
//! sizes with binary prefixes (Ki = 1024), as the rest of linkperf does.

/// A display unit: values are divided by `factor` and labelled `name`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub factor: f64,
    pub name: &'static str,
}

/// The rate unit for values up to `max` bits/s: Gbit/s from 1 Gbit/s up, and so on.
pub fn rate_unit(max: f64) -> Unit {
    let max = max.abs();
    let (factor, name) = if max >= 1e12 {
        (1e12, "Tbit/s")
    } else if max >= 1e9 {
        (1e9, "Gbit/s")
    } else if max >= 1e6 {
        (1e6, "Mbit/s")
    } else if max >= 1e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    };
    Unit { factor, name }
}

/// The size unit for values up to `max` bytes (binary prefixes).
pub fn bytes_unit(max: f64) -> Unit {
    let max = max.abs();
    let k = 1024.0;
    let (factor, name) = if max >= k * k * k {
        (k * k * k, "GiB")
    } else if max >= k * k {
        (k * k, "MiB")
    } else if max >= k {
        (k, "KiB")
    } else {
        (1.0, "bytes")
    };
    Unit { factor, name }
}

/// A rate for tables: three significant digits and a unit, "941 Mbit/s".
pub fn rate(bits_per_second: f64) -> String {
    linkperf_units::format_rate(bits_per_second)
}

/// A size for tables, "4.00 MiB"; exact powers of two print without decimals.
pub fn bytes(b: f64) -> String {
    size_label(b)
}

/// A compact size, "64 KiB", "1.5 MiB", "1470 B": what a swept socket buffer
/// or write size is called on an axis.
pub fn size_label(b: f64) -> String {
    let k = 1024.0;
    let (v, unit) = if b.abs() >= k * k * k {
        (b / (k * k * k), "GiB")
    } else if b.abs() >= k * k {
        (b / (k * k), "MiB")
    } else if b.abs() >= k {
        (b / k, "KiB")
    } else {
        return format!("{} B", b.round() as i64);
    };
    format!("{} {unit}", trim(v, 2))
}

/// A compact rate, "10 Mbit/s", "1.5 Gbit/s".
pub fn rate_label(bps: f64) -> String {
    let u = rate_unit(bps);
    format!("{} {}", trim(bps / u.factor, 2), u.name)
}

/// `v` with at most `decimals` decimals, trailing zeros dropped.
pub fn trim(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let s = format!("{:.*}", decimals, v);
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

/// Three significant digits for table cells in a fixed unit: 941, 94.1, 9.41.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    // Decide the decimals on the rounded value: 99.97 prints "100", not "100.0".
    let a = v.abs();
    let a = if (9.995..10.0).contains(&a) || (99.95..100.0).contains(&a) {
        a.round()
    } else {
        a
    };
    let d = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{:.*}", d, v);
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s[1..].to_string()
    } else {
        s
    }
}

/// A duration in milliseconds, in µs below 1 ms: "12.3 ms", "47 µs".
pub fn millis(ms: f64) -> String {
    if ms.abs() < 1.0 && ms != 0.0 {
        format!("{} µs", sig3(ms * 1000.0))
    } else {
        format!("{} ms", sig3(ms))
    }
}

/// A percentage for tables, "12.3 %".
pub fn percent(p: f64) -> String {
    format!("{} %", sig3(p))
}

/// Milliseconds since the Unix epoch as "2026-05-01 14:03:07 UTC".
pub fn utc(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC with milliseconds,
/// "2026-05-01T14:03:07.123Z" (for logs).
pub fn rfc3339(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms.rem_euclid(1000)
    )
}

/// Gregorian date of a day count since 1970-01-01 (proleptic calendar,
/// 400-year eras of 146097 days).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_range() {
        assert_eq!(rate_unit(950e6).name, "Mbit/s");
        assert_eq!(rate_unit(5.9e9).name, "Gbit/s");
        assert_eq!(rate_unit(212e9).name, "Gbit/s");
        assert_eq!(rate_unit(64e3).name, "kbit/s");
        assert_eq!(rate_unit(0.0).name, "bit/s");
        assert_eq!(bytes_unit(4096.0).name, "KiB");
        assert_eq!(bytes_unit(4.0 * 1024.0 * 1024.0).name, "MiB");
        assert_eq!(bytes_unit(1000.0).name, "bytes");
    }

    #[test]
    fn labels_are_compact() {
        assert_eq!(size_label(4096.0), "4 KiB");
        assert_eq!(size_label(1536.0 * 1024.0), "1.5 MiB");
        assert_eq!(size_label(1470.0), "1.44 KiB");
        assert_eq!(size_label(512.0), "512 B");
        assert_eq!(rate_label(950e6), "950 Mbit/s");
        assert_eq!(rate_label(1.5e9), "1.5 Gbit/s");
        assert_eq!(sig3(941.4), "941");
        assert_eq!(sig3(94.14), "94.1");
        assert_eq!(sig3(0.01234), "0.012");
        assert_eq!(sig3(-0.0001), "0.000");
        assert_eq!(percent(12.34), "12.3 %");
        assert_eq!(sig3(99.97), "100");
        assert_eq!(sig3(9.999), "10.0");
        assert_eq!(millis(0.047), "47.0 µs");
        assert_eq!(millis(12.34), "12.3 ms");
        assert_eq!(rate(941e6), "941 Mbit/s");
    }

    #[test]
    fn rfc3339_stamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        // 2000-03-01 is day 11017: a leap-year February lies before it.
        assert_eq!(
            rfc3339(11_017 * 86_400_000 + 3_723_456),
            "2000-03-01T01:02:03.456Z"
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20 UTC");
    }
}
