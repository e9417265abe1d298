//! Replayed traces: send times and sizes read from a CSV file (`TIME,SIZE`
//! per line) or a pcap capture. Parsing only; the caller reads the file.

use serde::{Deserialize, Serialize};

/// Most records a trace may hold: the whole trace travels to the server in
/// the test's configuration (so it can replay it with -R) within one control
/// message.
pub const MAX_RECORDS: usize = 100_000;

/// A trace: inter-departure times (seconds, the first from the start) and
/// message sizes (bytes). Replay loops over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Where it came from, for the result and `traffic show`.
    pub source: String,
    pub gaps: Vec<f64>,
    pub sizes: Vec<u64>,
}

impl Trace {
    /// Parses a CSV trace or a pcap capture (told apart by the pcap magic).
    pub fn parse(source: &str, bytes: &[u8]) -> Result<Trace, String> {
        let (times, sizes) = if is_pcap(bytes) {
            pcap(source, bytes)?
        } else {
            let text = std::str::from_utf8(bytes).map_err(|_| {
                format!("trace {source}: neither a CSV text file nor a pcap capture")
            })?;
            csv(source, text)?
        };
        if times.is_empty() {
            return Err(format!(
                "trace {source}: no records (expected lines of TIME,SIZE)"
            ));
        }
        if times.len() > MAX_RECORDS {
            return Err(format!(
                "trace {source}: {} records; at most {MAX_RECORDS}",
                times.len()
            ));
        }
        let mut gaps = Vec::with_capacity(times.len());
        let mut last = times[0];
        for t in &times {
            gaps.push(t - last);
            last = *t;
        }
        // Looping: the first record of the next round follows the last after
        // the trace's mean gap (a single record repeats every second).
        gaps[0] = if times.len() > 1 {
            (last - times[0]) / (times.len() - 1) as f64
        } else {
            1.0
        };
        if gaps.iter().sum::<f64>() <= 0.0 {
            return Err(format!("trace {source}: all records at the same time"));
        }
        Ok(Trace {
            source: source.to_string(),
            gaps,
            sizes,
        })
    }

    /// What [`Trace::parse`] guarantees, for a trace from elsewhere (a
    /// peer's wire config): 1 to [`MAX_RECORDS`] records, a gap for each
    /// size, sizes of a byte or more, gaps finite, not negative, not all zero.
    pub fn check(&self) -> Result<(), String> {
        let n = self.sizes.len();
        if n == 0 || n > MAX_RECORDS || self.gaps.len() != n {
            return Err(format!(
                "trace {}: {n} sizes and {} gaps; expected 1 to {MAX_RECORDS} records of each",
                self.source,
                self.gaps.len()
            ));
        }
        if self.sizes.contains(&0) {
            return Err(format!("trace {}: a record of 0 bytes", self.source));
        }
        let round = self.round_seconds();
        let usable = |g: &f64| (0.0..=crate::dist::MAX_GAP_S).contains(g);
        if !self.gaps.iter().all(usable) || round <= 0.0 {
            return Err(format!(
                "trace {}: gaps must be 0 to a day and not all zero",
                self.source
            ));
        }
        Ok(())
    }

    /// Seconds one round of the trace lasts (the first gap leads into the next round).
    pub fn round_seconds(&self) -> f64 {
        self.gaps.iter().sum()
    }

    pub fn mean_rate_bps(&self) -> f64 {
        self.sizes.iter().map(|&b| b as f64).sum::<f64>() * 8.0 / self.round_seconds()
    }
}

fn csv(source: &str, text: &str) -> Result<(Vec<f64>, Vec<u64>), String> {
    let (mut times, mut sizes) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = |col: usize, what: &str| {
            format!("trace {source} line {line_no}, column {col}: {what}; expected TIME,SIZE (seconds, bytes), e.g. 0.020,172")
        };
        if times.is_empty() && sizes.is_empty() && cols[0].parse::<f64>().is_err() {
            continue; // a header line
        }
        if cols.len() != 2 {
            return Err(at(cols.len().min(3), &format!("{} columns", cols.len())));
        }
        let t: f64 = cols[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| at(1, &format!("'{}' is not a time in seconds", cols[0])))?;
        if times.last().is_some_and(|&last| t < last) {
            return Err(at(1, &format!("time {t} is before the line above")));
        }
        let size: u64 = cols[1].parse().ok().filter(|&s| s > 0).ok_or_else(|| {
            at(
                2,
                &format!("'{}' is not a size in bytes (1 or more)", cols[1]),
            )
        })?;
        times.push(t);
        sizes.push(size);
    }
    Ok((times, sizes))
}

fn is_pcap(b: &[u8]) -> bool {
    b.len() >= 4
        && matches!(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1
        )
}

/// A classic pcap file: times from each record header, sizes as the frames'
/// original lengths.
fn pcap(source: &str, b: &[u8]) -> Result<(Vec<f64>, Vec<u64>), String> {
    let magic = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let little = matches!(magic, 0xa1b2_c3d4 | 0xa1b2_3c4d);
    let nanos = matches!(magic, 0xa1b2_3c4d | 0x4d3c_b2a1);
    let word = |at: usize| -> Option<u32> {
        let w: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        })
    };
    let (mut times, mut sizes) = (Vec::new(), Vec::new());
    let mut at = 24;
    while at < b.len() {
        let (record, start) = (times.len() + 1, at);
        let bad = || format!("trace {source}: pcap record {record} at byte {start} is cut short");
        let (sec, frac, incl, orig) = (
            word(at).ok_or_else(bad)?,
            word(at + 4).ok_or_else(bad)?,
            word(at + 8).ok_or_else(bad)?,
            word(at + 12).ok_or_else(bad)?,
        );
        let t = f64::from(sec) + f64::from(frac) * if nanos { 1e-9 } else { 1e-6 };
        if times.last().is_some_and(|&last| t < last) {
            return Err(format!(
                "trace {source}: pcap record {} goes back in time",
                times.len() + 1
            ));
        }
        times.push(t);
        sizes.push(u64::from(orig.max(1)));
        at += 16 + incl as usize;
        if at > b.len() {
            return Err(bad());
        }
    }
    Ok((times, sizes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_header_and_comments() {
        let t = Trace::parse("t.csv", b"time,size\n# voice\n0,172\n0.02,172\n0.05,100\n").unwrap();
        assert_eq!(t.sizes, vec![172, 172, 100]);
        // Looping gap = mean gap 0.025 s; then 0.02, 0.03.
        let want = [0.025, 0.02, 0.03];
        for (g, w) in t.gaps.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{:?}", t.gaps);
        }
        assert!((t.mean_rate_bps() - 444.0 * 8.0 / 0.075).abs() < 1e-6);
    }

    #[test]
    fn csv_errors_name_line_and_column() {
        let e = Trace::parse("t.csv", b"0,100\n0.1,abc\n").unwrap_err();
        assert!(e.contains("line 2, column 2") && e.contains("'abc'"), "{e}");
        let e = Trace::parse("t.csv", b"0,100\n0.5,100\n0.2,100\n").unwrap_err();
        assert!(
            e.contains("line 3, column 1") && e.contains("before"),
            "{e}"
        );
        let e = Trace::parse("t.csv", b"0,100,7\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("3 columns"), "{e}");
        assert!(Trace::parse("t.csv", b"# nothing\n")
            .unwrap_err()
            .contains("no records"));
    }

    #[test]
    fn pcap_records_give_times_and_lengths() {
        let mut b = Vec::new();
        for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        for (sec, usec, len) in [(10u32, 0u32, 60u32), (10, 500_000, 1514)] {
            for w in [sec, usec, 4, len] {
                b.extend_from_slice(&w.to_le_bytes());
            }
            b.extend_from_slice(&[0u8; 4]);
        }
        let t = Trace::parse("c.pcap", &b).unwrap();
        assert_eq!(t.sizes, vec![60, 1514]);
        assert!((t.gaps[1] - 0.5).abs() < 1e-9);
        b.truncate(b.len() - 2);
        assert!(Trace::parse("c.pcap", &b)
            .unwrap_err()
            .contains("cut short"));
    }
}
