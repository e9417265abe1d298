//! Trace-driven links, as mahimahi models them: a file of packet delivery opportunities, one
//! per line, each a time in whole milliseconds from the start of the trace (non-decreasing;
//! several lines may share a millisecond). At each opportunity the link can deliver
//! [`OPPORTUNITY_BYTES`] of queued packets; bytes an opportunity cannot use because the queue
//! is empty are lost, and a packet leaves at the opportunity that carries its last byte. When
//! the trace ends it starts again, shifted by its last time (its period).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Bytes one delivery opportunity carries (mahimahi's MTU-sized opportunity).
pub const OPPORTUNITY_BYTES: u64 = 1504;

/// A parsed trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The file it was read from, as given (for `status`).
    pub file: String,
    /// Delivery opportunities per pass.
    pub opportunities: usize,
    /// Length of one pass through the trace (its last time), in ms.
    pub period_ms: u64,
    /// Average capacity in bit/s (opportunities per period, each [`OPPORTUNITY_BYTES`]).
    pub mean_rate_bps: f64,
    /// Delivery opportunities, ms from the start of the trace, non-decreasing. Empty in a
    /// [`Trace::summary`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opportunities_ms: Vec<u32>,
}

impl Trace {
    /// A trace of the given opportunities (non-empty, non-decreasing, ending after 0 ms).
    pub fn from_list(file: &str, opportunities_ms: Vec<u32>) -> Trace {
        let period_ms = opportunities_ms.last().copied().unwrap_or(0) as u64;
        let mean_rate_bps = opportunities_ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0
            / (period_ms.max(1) as f64 / 1e3);
        Trace {
            file: file.to_string(),
            opportunities: opportunities_ms.len(),
            period_ms,
            mean_rate_bps,
            opportunities_ms,
        }
    }

    /// The same trace without its list of opportunities (what `status` shows).
    pub fn summary(&self) -> Trace {
        Trace {
            opportunities_ms: Vec::new(),
            ..self.clone()
        }
    }

    /// Parses trace text. Errors carry the 1-based line number and what is wrong. Blank lines
    /// and lines starting with `#` are skipped (mahimahi traces have neither).
    pub fn parse(file: &str, text: &str) -> Result<Trace, (usize, String)> {
        let mut opportunities_ms = Vec::new();
        let mut last_line = 0;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            last_line = i + 1;
            let ms: u32 = line.parse().map_err(|_| {
                (
                    i + 1,
                    format!("'{line}' is not a whole number of milliseconds"),
                )
            })?;
            if let Some(&last) = opportunities_ms.last() {
                if ms < last {
                    return Err((
                        i + 1,
                        format!("{ms} ms comes before the previous line's {last} ms"),
                    ));
                }
            }
            opportunities_ms.push(ms);
        }
        match opportunities_ms.last() {
            None => Err((1, "has no delivery opportunities".to_string())),
            Some(0) => Err((
                last_line,
                "the last time must be after 0 ms (it is the trace's period)".into(),
            )),
            Some(_) => Ok(Trace::from_list(file, opportunities_ms)),
        }
    }
}

/// Where a running link is in its trace: the serialiser of a trace-driven direction.
#[derive(Debug, Clone)]
pub struct TraceClock {
    trace: Arc<Trace>,
    /// Time (ns on the emulator clock) at which the trace's 0 ms falls.
    origin_ns: f64,
    period_ns: f64,
    /// The next opportunity not yet used: pass number and index in the trace.
    cycle: u64,
    index: usize,
    /// Time of the last opportunity used and the bytes it has left for a packet already
    /// waiting at that time.
    last_used_ns: f64,
    leftover: u64,
}

impl TraceClock {
    /// A clock whose trace starts at `origin_ns`.
    pub fn new(trace: Arc<Trace>, origin_ns: u64) -> TraceClock {
        let period_ns = trace.period_ms as f64 * 1e6;
        TraceClock {
            trace,
            origin_ns: origin_ns as f64,
            period_ns,
            cycle: 0,
            index: 0,
            last_used_ns: f64::NEG_INFINITY,
            leftover: 0,
        }
    }

    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    fn time_of(&self, cycle: u64, index: usize) -> f64 {
        self.origin_ns
            + cycle as f64 * self.period_ns
            + self.trace.opportunities_ms[index] as f64 * 1e6
    }

    /// Moves the cursor to the first opportunity at or after `t` (those before went unused).
    fn skip_to(&mut self, t: f64) {
        if self.time_of(self.cycle, self.index) >= t {
            return;
        }
        let since = (t - self.origin_ns).max(0.0);
        let mut cycle = (since / self.period_ns).floor() as u64;
        let ms = &self.trace.opportunities_ms;
        loop {
            let base = self.origin_ns + cycle as f64 * self.period_ns;
            let index = ms.partition_point(|&m| base + m as f64 * 1e6 < t);
            if index < ms.len() {
                if (cycle, index) > (self.cycle, self.index) {
                    self.cycle = cycle;
                    self.index = index;
                }
                return;
            }
            cycle += 1;
        }
    }

    /// Time at which the last of `bytes` is delivered, serialisation starting at `start_ns`.
    pub fn finish(&mut self, start_ns: f64, bytes: u64) -> f64 {
        let mut need = bytes;
        let mut finish = start_ns;
        // A packet waiting when the previous one left may use the rest of that opportunity.
        if self.leftover > 0 && start_ns <= self.last_used_ns {
            let used = need.min(self.leftover);
            need -= used;
            self.leftover -= used;
            finish = self.last_used_ns;
        }
        if need == 0 {
            return finish;
        }
        self.skip_to(start_ns);
        while need > 0 {
            finish = self.time_of(self.cycle, self.index);
            let used = need.min(OPPORTUNITY_BYTES);
            need -= used;
            self.leftover = OPPORTUNITY_BYTES - used;
            self.last_used_ns = finish;
            self.index += 1;
            if self.index == self.trace.opportunities_ms.len() {
                self.index = 0;
                self.cycle += 1;
            }
        }
        finish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ms: &[u32]) -> Arc<Trace> {
        Arc::new(Trace::from_list("t", ms.to_vec()))
    }

    #[test]
    fn parse_accepts_mahimahi_files_and_names_the_bad_line() {
        let t = Trace::parse("x", "1\n1\n2\n\n# comment\n4\n").unwrap();
        assert_eq!(t.opportunities_ms, [1, 1, 2, 4]);
        assert_eq!(t.period_ms, 4);
        assert!((t.mean_rate_bps - 4.0 * 1504.0 * 8.0 / 0.004).abs() < 1e-6);
        assert!(t.summary().opportunities_ms.is_empty());
        assert_eq!(t.summary().opportunities, 4);
        assert_eq!(Trace::parse("x", "1\n3\n2\n").unwrap_err().0, 3);
        let (line, msg) = Trace::parse("x", "1\nfast\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(msg.contains("'fast'"), "{msg}");
        assert!(Trace::parse("x", "").is_err());
        assert_eq!(Trace::parse("x", "0\n0\n").unwrap_err().0, 2);
    }

    #[test]
    fn packets_leave_at_the_opportunity_carrying_their_last_byte() {
        // One opportunity per ms: a 1504-byte packet per ms.
        let mut c = TraceClock::new(trace(&[1, 2, 3, 4]), 0);
        assert_eq!(c.finish(0.0, 1504), 1e6);
        assert_eq!(c.finish(1e6, 1504), 2e6);
        // Two 752-byte packets queued together share the 3 ms opportunity.
        assert_eq!(c.finish(2e6, 752), 3e6);
        assert_eq!(c.finish(3e6, 752), 3e6);
        // 3000 bytes need two opportunities (4 ms, then 5 ms = the next pass's 1 ms).
        assert_eq!(c.finish(3e6, 3000), 5e6);
    }

    #[test]
    fn idle_time_wastes_opportunities_and_the_trace_repeats() {
        let mut c = TraceClock::new(trace(&[1, 2, 3, 4]), 1_000_000_000);
        // Arriving at 2.5 ms into the third pass: the next opportunity is its 3 ms one.
        let start = 1e9 + 8e6 + 2.5e6;
        assert_eq!(c.finish(start, 100), 1e9 + 8e6 + 3e6);
        // The rest of that opportunity is not usable by a packet arriving after it.
        assert_eq!(c.finish(1e9 + 8e6 + 3.5e6, 100), 1e9 + 8e6 + 4e6);
        // Before the origin the first opportunity is the trace's first.
        let mut c = TraceClock::new(trace(&[5, 10]), 1_000_000);
        assert_eq!(c.finish(0.0, 1), 6e6);
    }
}
