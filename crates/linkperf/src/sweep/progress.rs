//! Sweep progress with ETA on stderr: a bar redrawn in place on a terminal;
//! elsewhere (a log under nohup, a pipe) one plain line as each run starts.

use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Bar,
    Lines,
}

pub struct Progress {
    mode: Mode,
    total: usize,
    done: usize,
    started: Instant,
    drawn: bool,
}

/// "1h02m", "3m05s", "12s".
pub fn format_eta(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The bar's text: `[#####.....] 12/40 label  ETA 1m20s`.
pub fn render(done: usize, total: usize, elapsed: Duration, label: &str, width: usize) -> String {
    let total = total.max(1);
    let filled = (done * width / total).min(width);
    let eta = if done == 0 {
        "ETA --".to_string()
    } else {
        let per = elapsed.as_secs_f64() / done as f64;
        let left = per * total.saturating_sub(done) as f64;
        format!("ETA {}", format_eta(Duration::from_secs_f64(left)))
    };
    format!(
        "[{}{}] {done}/{total} {label}  {eta}",
        "#".repeat(filled),
        ".".repeat(width - filled)
    )
}

/// The plain line for logs: `sweep: run 3 of 40 (window=4K #1), 1m02s elapsed, ETA 19m`.
pub fn line(done: usize, total: usize, elapsed: Duration, label: &str) -> String {
    let n = done + 1;
    let count = if n <= total {
        format!("run {n} of {total}")
    } else {
        format!("run {n}, beyond the {total} planned (--confidence)")
    };
    let eta = if done == 0 {
        "ETA after the first run".to_string()
    } else if n > total {
        "ETA unknown".to_string()
    } else {
        let per = elapsed.as_secs_f64() / done as f64;
        let left = per * (total - done) as f64;
        format!("ETA {}", format_eta(Duration::from_secs_f64(left)))
    };
    format!(
        "sweep: {count} ({label}), {} elapsed, {eta}",
        format_eta(elapsed)
    )
}

impl Progress {
    /// Nothing unless `wanted`; a bar when stderr is a terminal, else lines.
    pub fn new(total: usize, wanted: bool) -> Progress {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        Progress {
            mode: match (wanted, tty) {
                (false, _) => Mode::Off,
                (true, true) => Mode::Bar,
                (true, false) => Mode::Lines,
            },
            total,
            done: 0,
            started: Instant::now(),
            drawn: false,
        }
    }

    pub fn set_total(&mut self, total: usize) {
        self.total = total;
    }

    /// Shows that the next run (`label`) starts.
    pub fn show(&mut self, label: &str) {
        let elapsed = self.started.elapsed();
        let mut err = std::io::stderr().lock();
        match self.mode {
            Mode::Off => {}
            Mode::Bar => {
                let bar = render(self.done, self.total, elapsed, label, 30);
                let _ = write!(err, "\r\x1b[2K{bar}");
                let _ = err.flush();
                self.drawn = true;
            }
            Mode::Lines => {
                let _ = writeln!(err, "{}", line(self.done, self.total, elapsed, label));
            }
        }
    }

    pub fn tick(&mut self) {
        self.done += 1;
    }

    /// Clears the line, so messages and results start on a clean line.
    pub fn clear(&mut self) {
        if self.mode == Mode::Bar && self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_and_eta() {
        let s = render(0, 10, Duration::from_secs(0), "window=4K", 10);
        assert_eq!(s, "[..........] 0/10 window=4K  ETA --");
        let s = render(5, 10, Duration::from_secs(50), "x", 10);
        assert_eq!(s, "[#####.....] 5/10 x  ETA 50s");
        let s = render(1, 10, Duration::from_secs(100), "x", 10);
        assert!(s.ends_with("ETA 15m00s"), "{s}");
        assert_eq!(format_eta(Duration::from_secs(3725)), "1h02m");
        // More runs than planned (confidence mode) never overflows the bar.
        assert!(render(12, 10, Duration::from_secs(1), "x", 10).starts_with("[##########]"));
    }

    #[test]
    fn plain_lines_for_logs() {
        assert_eq!(
            line(0, 40, Duration::from_secs(0), "window=4K #1"),
            "sweep: run 1 of 40 (window=4K #1), 0s elapsed, ETA after the first run"
        );
        // 2 runs in 62 s: 31 s each, 38 left including the one starting.
        assert_eq!(
            line(2, 40, Duration::from_secs(62), "window=8K #1"),
            "sweep: run 3 of 40 (window=8K #1), 1m02s elapsed, ETA 19m38s"
        );
        assert!(line(10, 10, Duration::from_secs(9), "x").contains("beyond the 10 planned"));
    }
}
