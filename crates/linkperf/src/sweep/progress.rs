//! A one-line progress bar with ETA on stderr, drawn only on a terminal.

use std::io::Write;
use std::time::{Duration, Instant};

pub struct Progress {
    enabled: bool,
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

impl Progress {
    /// Draws only when `wanted` and stderr is a terminal.
    pub fn new(total: usize, wanted: bool) -> Progress {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        Progress {
            enabled: wanted && tty,
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
        if !self.enabled {
            return;
        }
        let line = render(self.done, self.total, self.started.elapsed(), label, 30);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    pub fn tick(&mut self) {
        self.done += 1;
    }

    /// Clears the line, so messages and results start on a clean line.
    pub fn clear(&mut self) {
        if self.enabled && self.drawn {
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
}
